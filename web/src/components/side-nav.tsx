/** The page list (nav-items.ts). On a phone it is hidden until the menu button opens it. */
import { NavLink } from 'react-router';
import { NAV_ITEMS } from './nav-items';

export function SideNav({ open, onNavigate }: { open: boolean; onNavigate: () => void }) {
  return (
    <nav id="side-nav" className={open ? 'sidenav open' : 'sidenav'} aria-label="Pages">
      <ul>
        {NAV_ITEMS.map((item) => (
          <li key={item.to}>
            <NavLink to={item.to} end={item.end ?? false} onClick={onNavigate} className={({ isActive }) => (isActive ? 'nav-link active' : 'nav-link')}>
              {item.label}
            </NavLink>
          </li>
        ))}
      </ul>
    </nav>
  );
}
